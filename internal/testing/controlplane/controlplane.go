package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
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

// User is an identity provisioned with a client certificate (envtest's
// User): Name becomes the user name, Groups its groups.
type User = envtest.User

// Options configures Start. The zero value is usable.
type Options struct {
	// BinDir holds etcd, kube-apiserver and kube-controller-manager.
	// Default: DefaultBinDir(), with envtest's TEST_ASSET_<NAME> variables
	// overriding single binaries.
	BinDir string

	// Ports to listen on, all on 127.0.0.1; 0 picks a free port.
	EtcdPort              int
	APIServerPort         int
	ControllerManagerPort int

	// LogDir receives one log file per component. Default: a directory in
	// the control plane's temporary directory, removed by Stop. Set it to
	// keep the logs.
	LogDir string
	// LogWriter, if set, additionally receives all component output.
	LogWriter io.Writer

	// Users are provisioned at start; see UserConfig. AddUser adds more
	// later.
	Users []User

	// Controllers enabled in kube-controller-manager. Default:
	// DefaultControllers.
	Controllers []string

	// Extra command-line arguments (--name=value or --name) for each
	// component; they replace the package's value of the same flag.
	EtcdArgs              []string
	APIServerArgs         []string
	ControllerManagerArgs []string

	// StartTimeout bounds Start (in addition to its context). Default:
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// StopTimeout is how long each component gets between SIGTERM and
	// SIGKILL. Default: DefaultStopTimeout.
	StopTimeout time.Duration

	// firstPorts are ports a test holds, given to the first start of etcd
	// and kube-apiserver in place of picked ones, to see Start pick again
	// (export_test.go).
	firstPorts struct{ etcd, apiServer int }
}

// Timings records how long each component took to become ready during
// Start.
type Timings struct {
	Etcd              time.Duration
	APIServer         time.Duration
	ControllerManager time.Duration
	Total             time.Duration
}

// ControlPlane is a running local control plane. Its accessors are safe for
// concurrent use; the Start*/Stop* hooks must not be called concurrently
// with each other.
type ControlPlane struct {
	opts   Options
	dir    string
	logDir string
	logs   []*os.File

	plane             envtest.ControlPlane
	controllerManager *controllerManager
	apiServerUp       bool

	admin           *rest.Config
	users           map[string]*rest.Config
	adminKubeconfig string

	timings  Timings
	stopOnce sync.Once
	stopErr  error

	// addUser serialises AddUser: envtest's certificate authority is not
	// safe for concurrent use, and parallel tests add users.
	addUser sync.Mutex
}

// Start creates a temporary directory, starts etcd and kube-apiserver
// through envtest and kube-controller-manager by hand, and waits until a
// Deployment can be created in the default namespace. ctx bounds only the
// startup; the processes run until Stop is called.
func Start(ctx context.Context, opts Options) (*ControlPlane, error) {
	bins, err := findBinaries(opts.BinDir)
	if err != nil {
		return nil, err
	}
	if len(opts.Controllers) == 0 {
		opts.Controllers = DefaultControllers
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	sweepStale()
	dir, err := os.MkdirTemp("", tempDirPattern)
	if err != nil {
		return nil, fmt.Errorf("controlplane: create temp dir: %w", err)
	}
	cp := &ControlPlane{opts: opts, dir: dir, logDir: opts.LogDir, users: map[string]*rest.Config{}}
	if err := cp.prepare(bins); err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if err := cp.startAll(ctx); err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	return cp, nil
}

// prepare writes the owner file, opens the logs and configures envtest's
// etcd and kube-apiserver and the kube-controller-manager process.
func (cp *ControlPlane) prepare(bins binaries) error {
	if err := writeOwner(cp.dir); err != nil {
		return fmt.Errorf("controlplane: write owner file: %w", err)
	}
	if cp.logDir == "" {
		cp.logDir = filepath.Join(cp.dir, "logs")
	}
	for _, d := range []string{cp.logDir, cp.path("etcd"), cp.path("pki")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("controlplane: create %s: %w", d, err)
		}
	}
	etcdLog, err := cp.openLog(EtcdBinary)
	if err != nil {
		return err
	}
	apiLog, err := cp.openLog(APIServerBinary)
	if err != nil {
		return err
	}
	kcmLog, err := cp.openLog(ControllerManagerBinary)
	if err != nil {
		return err
	}

	etcd := &envtest.Etcd{Path: bins.etcd, DataDir: cp.path("etcd"), Out: etcdLog, Err: etcdLog, StopTimeout: cp.opts.StopTimeout}
	if port := cmp.Or(cp.opts.EtcdPort, cp.opts.firstPorts.etcd); port != 0 {
		etcd.URL = &url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(port)}
	}
	etcd.Configure().Set("log-level", "warn")
	setArgs(etcd.Configure(), cp.opts.EtcdArgs)

	api := &envtest.APIServer{Path: bins.apiServer, CertDir: cp.path("pki"), Out: apiLog, Err: apiLog, StopTimeout: cp.opts.StopTimeout}
	if port := cmp.Or(cp.opts.APIServerPort, cp.opts.firstPorts.apiServer); port != 0 {
		api.SecureServing = envtest.SecureServing{ListenAddr: envtest.ListenAddr{Address: "127.0.0.1", Port: strconv.Itoa(port)}}
	}
	api.Configure().
		Set("advertise-address", "127.0.0.1").
		Set("endpoint-reconciler-type", "none").
		Set("profiling", "false").
		Set("shutdown-watch-termination-grace-period", "2s").
		// envtest turns the ServiceAccount admission plugin off because it
		// runs no controllers; kube-controller-manager runs here.
		Disable("disable-admission-plugins")
	setArgs(api.Configure(), cp.opts.APIServerArgs)
	cp.plane = envtest.ControlPlane{Etcd: etcd, APIServer: api}

	cp.controllerManager, err = newControllerManager(bins.controllerManager, kcmLog, cp.opts)
	return err
}

// openLog opens <logDir>/<name>.log for appending; Stop closes it.
func (cp *ControlPlane) openLog(name string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(cp.logDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("controlplane: open log of %s: %w", name, err)
	}
	cp.logs = append(cp.logs, f)
	return f, nil
}

// setArgs applies extra --name=value (or --name) arguments; a flag given
// more than once keeps every value.
func setArgs(a *envtest.Arguments, args []string) {
	seen := map[string]bool{}
	for _, arg := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		switch {
		case !hasValue:
			a.Enable(name)
		case seen[name]:
			a.AppendNoDefaults(name, value)
		default:
			a.Set(name, value)
		}
		seen[name] = true
	}
}

// startAll starts the components in dependency order and waits for each.
func (cp *ControlPlane) startAll(ctx context.Context) error {
	begin := time.Now()
	for _, s := range []struct {
		d     *time.Duration
		start func(context.Context) error
	}{
		{&cp.timings.Etcd, cp.StartEtcd},
		{&cp.timings.APIServer, cp.StartAPIServer},
		{&cp.timings.ControllerManager, cp.StartControllerManager},
	} {
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

// StartEtcd starts etcd (again, after StopEtcd, with the same data
// directory and port) and waits until it is healthy and, if the apiserver
// is running, until the apiserver is ready.
func (cp *ControlPlane) StartEtcd(ctx context.Context) error {
	etcd := cp.plane.Etcd
	var repick func()
	if cp.firstStart() && cp.opts.EtcdPort == 0 {
		repick = func() { etcd.URL = nil } // envtest picks the peer port at every start
	}
	err := cp.startPicking(EtcdBinary, func() error {
		etcd.StartTimeout = untilDeadline(ctx, cp.opts.StartTimeout)
		return etcd.Start()
	}, repick)
	if err != nil {
		return cp.componentError(EtcdBinary, err)
	}
	if cp.apiServerUp {
		return cp.WaitAPIServerReady(ctx)
	}
	return nil
}

// StopEtcd stops etcd; its data directory is kept for StartEtcd.
func (cp *ControlPlane) StopEtcd() error {
	return wrap(cp.plane.Etcd.Stop())
}

// StartAPIServer starts kube-apiserver (again, after StopAPIServer, with
// the same port and certificates) and waits until /readyz succeeds and the
// default namespace exists. The first start provisions the users.
func (cp *ControlPlane) StartAPIServer(ctx context.Context) error {
	api := cp.plane.APIServer
	api.EtcdURL = cp.plane.Etcd.URL
	var repick func()
	if cp.firstStart() && cp.opts.APIServerPort == 0 {
		repick = func() {
			// envtest copies the port it picked into the deprecated
			// SecurePort too, and prefers that field when it is set.
			api.SecurePort = 0                    //nolint:staticcheck // see above
			api.ListenAddr = envtest.ListenAddr{} // SecureServing's
		}
	}
	err := cp.startPicking(APIServerBinary, func() error {
		api.StartTimeout = untilDeadline(ctx, cp.opts.StartTimeout)
		return api.Start()
	}, repick)
	if err != nil {
		return cp.componentError(APIServerBinary, err)
	}
	cp.apiServerUp = true
	if cp.firstStart() {
		if err := cp.provisionUsers(); err != nil {
			return err
		}
	}
	if err := cp.WaitAPIServerReady(ctx); err != nil {
		return err
	}
	return cp.waitDefaultNamespace(ctx)
}

// StopAPIServer stops kube-apiserver.
func (cp *ControlPlane) StopAPIServer() error {
	cp.apiServerUp = false
	return wrap(cp.plane.APIServer.Stop())
}

// StartControllerManager starts kube-controller-manager (again, after
// StopControllerManager) and waits until its /healthz succeeds.
func (cp *ControlPlane) StartControllerManager(ctx context.Context) error {
	if err := cp.controllerManager.start(ctx); err != nil {
		return cp.componentError(ControllerManagerBinary, err)
	}
	return nil
}

// StopControllerManager stops kube-controller-manager.
func (cp *ControlPlane) StopControllerManager() error {
	return wrap(cp.controllerManager.stop())
}

// Stop terminates kube-controller-manager, kube-apiserver and etcd (SIGTERM,
// then SIGKILL after Options.StopTimeout) and removes the temporary
// directory. It is idempotent.
func (cp *ControlPlane) Stop() error {
	cp.stopOnce.Do(func() {
		var errs []error
		if cp.controllerManager != nil {
			errs = append(errs, cp.controllerManager.stop())
		}
		errs = append(errs, cp.plane.Stop())
		for _, f := range cp.logs {
			_ = f.Close()
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
func (cp *ControlPlane) KubeconfigPath() string { return cp.adminKubeconfig }

// Endpoint is the apiserver URL, https://127.0.0.1:<port>.
func (cp *ControlPlane) Endpoint() string {
	return cp.plane.APIServer.SecureServing.URL("https", "").String()
}

// EtcdEndpoint is the etcd client URL, http://127.0.0.1:<port>.
func (cp *ControlPlane) EtcdEndpoint() string { return cp.plane.Etcd.URL.String() }

// LogDir is the directory holding etcd.log, kube-apiserver.log and
// kube-controller-manager.log.
func (cp *ControlPlane) LogDir() string { return cp.logDir }

// Timings reports how long the components took to become ready in Start.
func (cp *ControlPlane) Timings() Timings { return cp.timings }

// UserConfig returns the client configuration of a user from
// Options.Users.
func (cp *ControlPlane) UserConfig(name string) (*rest.Config, error) {
	cfg, ok := cp.users[name]
	if !ok {
		return nil, fmt.Errorf("controlplane: user %q not in Options.Users", name)
	}
	return rest.CopyConfig(cfg), nil
}

// AddUser issues a client certificate for a user with the given groups
// (through envtest) and returns a client configuration using it. No restart
// is needed. The identity has no permissions until RBAC grants them (unless
// groups contains system:masters). Tests may call it concurrently.
func (cp *ControlPlane) AddUser(name string, groups []string) (*rest.Config, error) {
	if name == "" {
		return nil, errors.New("controlplane: AddUser: empty user name")
	}
	cp.addUser.Lock()
	defer cp.addUser.Unlock()
	u, err := cp.plane.AddUser(User{Name: name, Groups: groups}, &rest.Config{QPS: 100, Burst: 200})
	if err != nil {
		return nil, fmt.Errorf("controlplane: add user %q: %w", name, err)
	}
	cfg := rest.CopyConfig(u.Config())
	cfg.Host = cp.Endpoint()
	return cfg, nil
}

// provisionUsers adds the admin, kube-controller-manager and Options.Users
// and writes the admin's and kube-controller-manager's kubeconfigs.
func (cp *ControlPlane) provisionUsers() error {
	admin, err := cp.AddUser("confighash-admin", []string{"system:masters"})
	if err != nil {
		return err
	}
	cp.adminKubeconfig = cp.path("admin.kubeconfig")
	if err := WriteKubeconfig(admin, cp.adminKubeconfig); err != nil {
		return err
	}
	for _, u := range cp.opts.Users {
		if cp.users[u.Name], err = cp.AddUser(u.Name, u.Groups); err != nil {
			return err
		}
	}
	kcm, err := cp.AddUser("system:kube-controller-manager", []string{"system:masters"})
	if err != nil {
		return err
	}
	if err := cp.controllerManager.configure(kcm, cp.plane.APIServer.CertDir, cp.dir); err != nil {
		return err
	}
	cp.admin = admin
	return nil
}

// firstStart reports whether Start is still starting the components: the
// admin is provisioned once the first kube-apiserver is up. Later starts
// are restarts, whose ports clients already point at.
func (cp *ControlPlane) firstStart() bool { return cp.admin == nil }

// startPicking starts a component whose ports envtest picks. A port found
// free can be taken before the process binds it (by another process, or as
// the local port of a connection); while the component exits saying so in
// its log, repick lets envtest pick its ports anew and it is started again,
// at most portAttempts times. A nil repick (ports fixed by Options, or kept
// by a restart that clients already point at) starts it once.
func (cp *ControlPlane) startPicking(name string, start func() error, repick func()) error {
	logPath := filepath.Join(cp.logDir, name+".log")
	return whilePortTaken(repick != nil, func(attempt int) error {
		if attempt > 1 {
			repick()
		}
		before := fileSize(logPath)
		err := start()
		if err != nil && portTakenSince(logPath, before) {
			return fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return err
	})
}

// fileSize is the size of the file at path, 0 when it cannot be read.
func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// portTakenSince reports whether the log at path says, after its first
// offset bytes, that a process could not bind an address.
func portTakenSince(path string, offset int64) bool {
	data, err := os.ReadFile(path)
	if err != nil || int64(len(data)) < offset {
		return false
	}
	return strings.Contains(string(data[offset:]), "address already in use")
}

// path is a path in the temporary directory.
func (cp *ControlPlane) path(name string) string { return filepath.Join(cp.dir, name) }

// componentError wraps a component's failure with the tail of its log.
func (cp *ControlPlane) componentError(name string, err error) error {
	logPath := filepath.Join(cp.logDir, name+".log")
	return fmt.Errorf("controlplane: %s: %w\n--- last lines of %s ---\n%s\n---", name, err, logPath, tail(logPath))
}

// logTailLines is how many lines of a component's log an error includes.
const logTailLines = 40

// tail returns the last lines of a log file.
func tail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-logTailLines):], "\n")
}

// untilDeadline is the time left before ctx's deadline, or def without one.
func untilDeadline(ctx context.Context, def time.Duration) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return max(time.Until(d), time.Second)
	}
	return def
}

// wrap prefixes a non-nil error with the package name.
func wrap(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("controlplane: %w", err)
}
