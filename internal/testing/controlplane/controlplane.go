package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

// DefaultControllers are the kube-controller-manager controllers enabled
// when Options.Controllers is empty: everything a Deployment, StatefulSet or
// DaemonSet rollout needs, plus garbage collection, namespace deletion and
// default ServiceAccounts (required by the ServiceAccount admission plugin
// before Pods can be created).
var DefaultControllers = []string{
	"deployment-controller",
	"replicaset-controller",
	"statefulset-controller",
	"daemonset-controller",
	"garbage-collector-controller",
	"namespace-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"root-ca-certificate-publisher-controller",
}

// Default timeouts.
const (
	DefaultStartTimeout = 2 * time.Minute
	DefaultStopTimeout  = 15 * time.Second
)

// User is an identity added to the apiserver's static token file at start.
type User struct {
	// Name is the user name; it must not contain commas, quotes or newlines.
	Name string
	// Groups are the groups the user belongs to.
	Groups []string
}

// Options configures Start. The zero value is usable.
type Options struct {
	// BinDir holds etcd, kube-apiserver and kube-controller-manager.
	// Default: DefaultBinDir().
	BinDir string

	// Ports to listen on, all on 127.0.0.1; 0 picks a free port.
	EtcdPort              int
	EtcdPeerPort          int
	APIServerPort         int
	ControllerManagerPort int

	// LogDir receives one log file per component. Default: a directory in
	// the control plane's temporary directory, removed by Stop. Set it to
	// keep the logs.
	LogDir string
	// LogWriter, if set, additionally receives all component output.
	LogWriter io.Writer

	// Users get static bearer tokens; see UserConfig. AddUser can add
	// certificate-based users later without a restart.
	Users []User

	// Controllers enabled in kube-controller-manager. Default:
	// DefaultControllers.
	Controllers []string

	// Extra command-line arguments appended to each component's defaults.
	EtcdArgs              []string
	APIServerArgs         []string
	ControllerManagerArgs []string

	// StartTimeout bounds Start (in addition to its context). Default:
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// StopTimeout is how long each component gets between SIGTERM and
	// SIGKILL. Default: DefaultStopTimeout.
	StopTimeout time.Duration
}

// Timings records how long each component took to become ready during
// Start.
type Timings struct {
	Etcd              time.Duration
	APIServer         time.Duration
	ControllerManager time.Duration
	Total             time.Duration
}

// ControlPlane is a running local control plane. Its methods are safe for
// concurrent use, except that the Start*/Stop* hooks of one component must
// not be called concurrently with each other.
type ControlPlane struct {
	opts   Options
	dir    string
	logDir string
	files  files
	ports  ports
	tokens map[string]string // user name -> bearer token

	servingCA *keyPair
	clientCA  *keyPair
	admin     *rest.Config

	etcd              *process
	apiServer         *process
	controllerManager *process

	timings  Timings
	stopOnce sync.Once
	stopErr  error
}

// files are the paths of generated credentials and configuration.
type files struct {
	servingCA, servingCert, servingKey string
	clientCA                           string
	saKey, saPub                       string
	tokens                             string
	adminKubeconfig, kcmKubeconfig     string
	etcdData, apiCertDir, kcmCertDir   string
}

// ports are the resolved listening ports.
type ports struct {
	etcd, etcdPeer, apiServer, controllerManager int
}

// Start creates a temporary directory with credentials, starts etcd,
// kube-apiserver and kube-controller-manager, and waits until a Deployment
// can be created in the default namespace. ctx bounds only the startup; the
// processes run until Stop is called (or the test process dies, on Linux).
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	cp, err := newControlPlane(opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := cp.startAll(ctx); err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	return cp, nil
}

// withDefaults fills in defaults and validates the options.
func (o Options) withDefaults() (Options, error) {
	if o.BinDir == "" {
		dir, err := DefaultBinDir()
		if err != nil {
			return o, err
		}
		o.BinDir = dir
	}
	if err := CheckBinaries(o.BinDir); err != nil {
		return o, err
	}
	if len(o.Controllers) == 0 {
		o.Controllers = DefaultControllers
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = DefaultStopTimeout
	}
	for _, u := range o.Users {
		if err := validateTokenUser(u); err != nil {
			return o, err
		}
	}
	return o, nil
}

// validateTokenUser rejects users that cannot be stored in a token file.
func validateTokenUser(u User) error {
	if err := validateUserName(u.Name); err != nil {
		return err
	}
	for _, g := range u.Groups {
		if g == "" || strings.ContainsAny(g, ",\"\n\r") {
			return fmt.Errorf("controlplane: user %q: invalid group name %q", u.Name, g)
		}
	}
	return nil
}

// validateUserName rejects empty names and names with characters that are
// special in the token file (commas, quotes, newlines).
func validateUserName(name string) error {
	if name == "" || strings.ContainsAny(name, ",\"\n\r") {
		return fmt.Errorf("controlplane: invalid user name %q", name)
	}
	return nil
}

// newControlPlane prepares directories, ports, credentials and processes.
func newControlPlane(opts Options) (*ControlPlane, error) {
	sweepStale()
	dir, err := os.MkdirTemp("", tempDirPattern)
	if err != nil {
		return nil, fmt.Errorf("controlplane: create temp dir: %w", err)
	}
	cp := &ControlPlane{opts: opts, dir: dir, logDir: opts.LogDir}
	if err := writeOwner(dir); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("controlplane: write owner file: %w", err)
	}
	if err := cp.prepare(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return cp, nil
}

// prepare resolves ports, writes credentials and defines the processes.
func (cp *ControlPlane) prepare() error {
	if cp.logDir == "" {
		cp.logDir = filepath.Join(cp.dir, "logs")
	}
	if err := os.MkdirAll(cp.logDir, 0o700); err != nil {
		return fmt.Errorf("controlplane: create log dir: %w", err)
	}
	p, err := resolvePorts(cp.opts)
	if err != nil {
		return err
	}
	cp.ports = p
	if err := cp.writeCredentials(); err != nil {
		return err
	}
	cp.etcd = cp.newProcess(EtcdBinary, cp.etcdArgs())
	cp.apiServer = cp.newProcess(APIServerBinary, cp.apiServerArgs())
	cp.controllerManager = cp.newProcess(ControllerManagerBinary, cp.controllerManagerArgs())
	return nil
}

// newProcess defines a component process logging to <logDir>/<name>.log.
func (cp *ControlPlane) newProcess(name string, args []string) *process {
	return &process{
		name:    name,
		path:    filepath.Join(cp.opts.BinDir, name),
		args:    args,
		logPath: filepath.Join(cp.logDir, name+".log"),
		logTee:  cp.opts.LogWriter,
	}
}

// resolvePorts replaces zero ports with free ones. All listeners are held
// until every port is chosen so no port is handed out twice.
func resolvePorts(o Options) (ports, error) {
	p := ports{o.EtcdPort, o.EtcdPeerPort, o.APIServerPort, o.ControllerManagerPort}
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	for _, port := range []*int{&p.etcd, &p.etcdPeer, &p.apiServer, &p.controllerManager} {
		if *port != 0 {
			continue
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return p, fmt.Errorf("controlplane: pick free port: %w", err)
		}
		listeners = append(listeners, l)
		*port = l.Addr().(*net.TCPAddr).Port
	}
	return p, nil
}

// startAll starts the components in dependency order and waits for each.
func (cp *ControlPlane) startAll(ctx context.Context) error {
	begin := time.Now()
	steps := []struct {
		d     *time.Duration
		start func(context.Context) error
	}{
		{&cp.timings.Etcd, cp.StartEtcd},
		{&cp.timings.APIServer, cp.StartAPIServer},
		{&cp.timings.ControllerManager, cp.StartControllerManager},
	}
	for _, s := range steps {
		t := time.Now()
		if err := s.start(ctx); err != nil {
			return err
		}
		*s.d = time.Since(t)
	}
	if err := cp.waitWorkloadsAdmitted(ctx); err != nil {
		return err
	}
	cp.timings.Total = time.Since(begin)
	return nil
}

// StartEtcd starts etcd (again, after StopEtcd) and waits until it is
// healthy and, if the apiserver is running, until the apiserver is ready.
func (cp *ControlPlane) StartEtcd(ctx context.Context) error {
	if err := cp.etcd.start(); err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	if err := poll(ctx, cp.etcd, cp.etcdHealthy); err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	if cp.apiServer.exitedChan() != nil {
		return cp.WaitAPIServerReady(ctx)
	}
	return nil
}

// StopEtcd stops etcd; its data directory is kept for StartEtcd.
func (cp *ControlPlane) StopEtcd() error {
	return wrap(cp.etcd.stop(cp.opts.StopTimeout))
}

// StartAPIServer starts kube-apiserver (again, after StopAPIServer) with the
// same port and credentials and waits until /readyz succeeds.
func (cp *ControlPlane) StartAPIServer(ctx context.Context) error {
	if err := cp.apiServer.start(); err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	if err := cp.WaitAPIServerReady(ctx); err != nil {
		return err
	}
	return cp.waitDefaultNamespace(ctx)
}

// StopAPIServer stops kube-apiserver.
func (cp *ControlPlane) StopAPIServer() error {
	return wrap(cp.apiServer.stop(cp.opts.StopTimeout))
}

// StartControllerManager starts kube-controller-manager (again, after
// StopControllerManager) and waits until its /healthz succeeds.
func (cp *ControlPlane) StartControllerManager(ctx context.Context) error {
	if err := cp.controllerManager.start(); err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	if err := poll(ctx, cp.controllerManager, cp.controllerManagerHealthy); err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	return nil
}

// StopControllerManager stops kube-controller-manager.
func (cp *ControlPlane) StopControllerManager() error {
	return wrap(cp.controllerManager.stop(cp.opts.StopTimeout))
}

// WaitAPIServerReady polls the apiserver's /readyz until it returns 200.
func (cp *ControlPlane) WaitAPIServerReady(ctx context.Context) error {
	if err := poll(ctx, cp.apiServer, cp.apiServerReady); err != nil {
		return fmt.Errorf("controlplane: %w", err)
	}
	return nil
}

// Stop terminates kube-controller-manager, kube-apiserver and etcd (SIGTERM,
// then SIGKILL after Options.StopTimeout) and removes the temporary
// directory. It is idempotent.
func (cp *ControlPlane) Stop() error {
	cp.stopOnce.Do(func() {
		var errs []error
		for _, p := range []*process{cp.controllerManager, cp.apiServer, cp.etcd} {
			if p != nil {
				errs = append(errs, p.stop(cp.opts.StopTimeout))
			}
		}
		if err := os.RemoveAll(cp.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", cp.dir, err))
		}
		cp.stopErr = wrap(errors.Join(errs...))
	})
	return cp.stopErr
}

// RESTConfig returns a new admin (system:masters) client configuration.
func (cp *ControlPlane) RESTConfig() *rest.Config {
	return rest.CopyConfig(cp.admin)
}

// KubeconfigPath is the path of an admin kubeconfig file with inline
// credentials. It is removed by Stop.
func (cp *ControlPlane) KubeconfigPath() string { return cp.files.adminKubeconfig }

// Endpoint is the apiserver URL, https://127.0.0.1:<port>.
func (cp *ControlPlane) Endpoint() string {
	return fmt.Sprintf("https://127.0.0.1:%d", cp.ports.apiServer)
}

// EtcdEndpoint is the etcd client URL, http://127.0.0.1:<port>.
func (cp *ControlPlane) EtcdEndpoint() string {
	return fmt.Sprintf("http://127.0.0.1:%d", cp.ports.etcd)
}

// Dir is the control plane's temporary directory.
func (cp *ControlPlane) Dir() string { return cp.dir }

// LogDir is the directory holding etcd.log, kube-apiserver.log and
// kube-controller-manager.log.
func (cp *ControlPlane) LogDir() string { return cp.logDir }

// Timings reports how long the components took to become ready in Start.
func (cp *ControlPlane) Timings() Timings { return cp.timings }

// UserConfig returns a client configuration authenticating with the static
// token of a user from Options.Users.
func (cp *ControlPlane) UserConfig(name string) (*rest.Config, error) {
	token, ok := cp.tokens[name]
	if !ok {
		return nil, fmt.Errorf("controlplane: user %q not in Options.Users", name)
	}
	cfg := cp.anonymousConfig()
	cfg.BearerToken = token
	return cfg, nil
}

// AddUser issues a client certificate for a user with the given groups and
// returns a client configuration using it. No restart is needed. The
// identity has no permissions until RBAC grants them (unless groups
// contains system:masters).
func (cp *ControlPlane) AddUser(name string, groups []string) (*rest.Config, error) {
	if err := validateUserName(name); err != nil {
		return nil, err
	}
	kp, err := newClientCert(cp.clientCA, name, groups)
	if err != nil {
		return nil, fmt.Errorf("controlplane: issue client certificate for %q: %w", name, err)
	}
	cfg := cp.anonymousConfig()
	cfg.CertData, cfg.KeyData = kp.certPEM, kp.keyPEM
	return cfg, nil
}

// anonymousConfig returns a configuration that trusts the serving CA but
// carries no credentials.
func (cp *ControlPlane) anonymousConfig() *rest.Config {
	return &rest.Config{
		Host:            cp.Endpoint(),
		TLSClientConfig: rest.TLSClientConfig{CAData: cp.servingCA.certPEM},
		QPS:             100,
		Burst:           200,
	}
}

// wrap prefixes a non-nil error with the package name.
func wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("controlplane: %w", err)
}
