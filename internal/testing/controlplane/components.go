package controlplane

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	// serviceIP is the first address of the service range, used by the
	// in-cluster "kubernetes" Service.
	serviceIP = "10.0.0.1"
	// serviceAccountIssuer is the issuer of service account tokens.
	serviceAccountIssuer = "https://kubernetes.default.svc.cluster.local"
	// adminUser and kcmUser are the static-token identities of the admin
	// and of kube-controller-manager (both in system:masters).
	adminUser = "confighash-admin"
	kcmUser   = "system:kube-controller-manager"
	// pollInterval is the delay between readiness probes.
	pollInterval = 100 * time.Millisecond
)

// etcdArgs are etcd's command-line arguments.
func (cp *ControlPlane) etcdArgs() []string {
	client := cp.EtcdEndpoint()
	peer := fmt.Sprintf("http://127.0.0.1:%d", cp.ports.etcdPeer)
	args := []string{
		"--name=confighash",
		"--data-dir=" + cp.files.etcdData,
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=confighash=" + peer,
		"--unsafe-no-fsync",
		"--log-level=warn",
	}
	return append(args, cp.opts.EtcdArgs...)
}

// apiServerArgs are kube-apiserver's command-line arguments.
func (cp *ControlPlane) apiServerArgs() []string {
	f := cp.files
	args := []string{
		"--etcd-servers=" + cp.EtcdEndpoint(),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(cp.ports.apiServer),
		"--cert-dir=" + f.apiCertDir,
		"--tls-cert-file=" + f.servingCert,
		"--tls-private-key-file=" + f.servingKey,
		"--client-ca-file=" + f.clientCA,
		"--token-auth-file=" + f.tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=" + serviceAccountIssuer,
		"--service-account-key-file=" + f.saPub,
		"--service-account-signing-key-file=" + f.saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--endpoint-reconciler-type=none",
		"--allow-privileged=true",
		"--profiling=false",
		"--shutdown-watch-termination-grace-period=2s",
	}
	return append(args, cp.opts.APIServerArgs...)
}

// controllerManagerArgs are kube-controller-manager's command-line arguments.
func (cp *ControlPlane) controllerManagerArgs() []string {
	f := cp.files
	args := []string{
		"--kubeconfig=" + f.kcmKubeconfig,
		"--authentication-kubeconfig=" + f.kcmKubeconfig,
		"--authorization-kubeconfig=" + f.kcmKubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(cp.ports.controllerManager),
		"--cert-dir=" + f.kcmCertDir,
		"--leader-elect=false",
		"--controllers=" + strings.Join(cp.opts.Controllers, ","),
		"--service-account-private-key-file=" + f.saKey,
		"--root-ca-file=" + f.servingCA,
		"--kube-api-qps=100",
		"--kube-api-burst=200",
		"--profiling=false",
	}
	return append(args, cp.opts.ControllerManagerArgs...)
}

// writeCredentials generates CAs, certificates, the service account key,
// the token file and kubeconfigs in the temporary directory.
func (cp *ControlPlane) writeCredentials() error {
	if err := cp.makeDirs(); err != nil {
		return err
	}
	if err := cp.writePKI(); err != nil {
		return fmt.Errorf("controlplane: generate certificates: %w", err)
	}
	if err := cp.writeServiceAccountKey(); err != nil {
		return fmt.Errorf("controlplane: generate service account key: %w", err)
	}
	if err := cp.writeTokens(); err != nil {
		return fmt.Errorf("controlplane: write token file: %w", err)
	}
	if err := cp.writeKubeconfigs(); err != nil {
		return fmt.Errorf("controlplane: write kubeconfig: %w", err)
	}
	return nil
}

// makeDirs creates the data and certificate directories.
func (cp *ControlPlane) makeDirs() error {
	cp.files.etcdData = filepath.Join(cp.dir, "etcd")
	cp.files.apiCertDir = filepath.Join(cp.dir, "pki")
	cp.files.kcmCertDir = filepath.Join(cp.dir, "kcm-certs")
	for _, d := range []string{cp.files.etcdData, cp.files.apiCertDir, cp.files.kcmCertDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("controlplane: create %s: %w", d, err)
		}
	}
	return nil
}

// writePKI creates the serving CA and certificate and the client CA.
func (cp *ControlPlane) writePKI() error {
	var err error
	if cp.servingCA, err = newCA("confighash-serving-ca"); err != nil {
		return err
	}
	serving, err := newServingCert(cp.servingCA)
	if err != nil {
		return err
	}
	if cp.clientCA, err = newCA("confighash-client-ca"); err != nil {
		return err
	}
	dir, f := cp.files.apiCertDir, &cp.files
	for _, w := range []struct {
		path *string
		name string
		data []byte
	}{
		{&f.servingCA, "serving-ca.crt", cp.servingCA.certPEM},
		{&f.servingCert, "apiserver.crt", serving.certPEM},
		{&f.servingKey, "apiserver.key", serving.keyPEM},
		{&f.clientCA, "client-ca.crt", cp.clientCA.certPEM},
	} {
		if *w.path, err = writeFile(dir, w.name, w.data); err != nil {
			return err
		}
	}
	return nil
}

// writeServiceAccountKey creates the key pair that signs service account
// tokens.
func (cp *ControlPlane) writeServiceAccountKey() error {
	key, err := newKey()
	if err != nil {
		return err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return err
	}
	pubPEM, err := encodePublicKey(key.Public())
	if err != nil {
		return err
	}
	if cp.files.saKey, err = writeFile(cp.files.apiCertDir, "sa.key", keyPEM); err != nil {
		return err
	}
	cp.files.saPub, err = writeFile(cp.files.apiCertDir, "sa.pub", pubPEM)
	return err
}

// writeTokens writes the static token file for the admin,
// kube-controller-manager and Options.Users.
func (cp *ControlPlane) writeTokens() error {
	users := append([]User{
		{Name: adminUser, Groups: []string{"system:masters"}},
		{Name: kcmUser, Groups: []string{"system:masters"}},
	}, cp.opts.Users...)
	cp.tokens = make(map[string]string, len(users))
	var b strings.Builder
	for _, u := range users {
		if _, dup := cp.tokens[u.Name]; dup {
			return fmt.Errorf("duplicate or reserved user name %q", u.Name)
		}
		token, err := newToken()
		if err != nil {
			return err
		}
		cp.tokens[u.Name] = token
		b.WriteString(tokenLine(token, u.Name, u.Groups))
	}
	var err error
	cp.files.tokens, err = writeFile(cp.files.apiCertDir, "tokens.csv", []byte(b.String()))
	return err
}

// writeKubeconfigs writes the admin and kube-controller-manager kubeconfigs
// and builds the admin REST config.
func (cp *ControlPlane) writeKubeconfigs() error {
	cp.admin = cp.anonymousConfig()
	cp.admin.BearerToken = cp.tokens[adminUser]
	cp.files.adminKubeconfig = filepath.Join(cp.dir, "admin.kubeconfig")
	if err := WriteKubeconfig(cp.admin, cp.files.adminKubeconfig); err != nil {
		return err
	}
	kcm := cp.anonymousConfig()
	kcm.BearerToken = cp.tokens[kcmUser]
	cp.files.kcmKubeconfig = filepath.Join(cp.dir, "kube-controller-manager.kubeconfig")
	return WriteKubeconfig(kcm, cp.files.kcmKubeconfig)
}

// WriteKubeconfig writes a self-contained kubeconfig file (inline CA and
// credentials) for cfg, with a single context named "confighash".
func WriteKubeconfig(cfg *rest.Config, path string) error {
	const name = "confighash"
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{
		Token:                 cfg.BearerToken,
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
	}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default"}
	kc.CurrentContext = name
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		return fmt.Errorf("controlplane: write kubeconfig %s: %w", path, err)
	}
	return nil
}

// poll calls check every pollInterval until it succeeds, the process exits
// or ctx ends. Errors include the tail of the component's log.
func poll(ctx context.Context, p *process, check func(context.Context) error) error {
	exited := p.exitedChan()
	if exited == nil {
		return fmt.Errorf("%s: not running", p.name)
	}
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			return p.withTail(fmt.Errorf("%w: %w", errExited, p.exitError()))
		case <-ctx.Done():
			return p.withTail(fmt.Errorf("not ready: %w (last probe: %w)", ctx.Err(), err))
		case <-ticker.C:
		}
	}
}

// probe GETs url with client and requires a 200 response whose body
// contains want.
func probe(ctx context.Context, client *http.Client, url, want string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// etcdHealthy probes etcd's /health endpoint.
func (cp *ControlPlane) etcdHealthy(ctx context.Context) error {
	return probe(ctx, http.DefaultClient, cp.EtcdEndpoint()+"/health", `"health":"true"`)
}

// apiServerReady probes the apiserver's /readyz endpoint as admin.
func (cp *ControlPlane) apiServerReady(ctx context.Context) error {
	client, err := rest.HTTPClientFor(cp.admin)
	if err != nil {
		return err
	}
	defer client.CloseIdleConnections()
	return probe(ctx, client, cp.Endpoint()+"/readyz", "ok")
}

// controllerManagerHealthy probes kube-controller-manager's /healthz. Its
// serving certificate is self-signed, so it is not verified.
func (cp *ControlPlane) controllerManagerHealthy(ctx context.Context) error {
	tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // local self-signed health endpoint
	defer tr.CloseIdleConnections()
	url := fmt.Sprintf("https://127.0.0.1:%d/healthz", cp.ports.controllerManager)
	return probe(ctx, &http.Client{Transport: tr}, url, "ok")
}

// clientset returns an admin clientset.
func (cp *ControlPlane) clientset() (*kubernetes.Clientset, error) {
	return kubernetes.NewForConfig(cp.RESTConfig())
}

// waitDefaultNamespace waits until the apiserver has created the default
// namespace.
func (cp *ControlPlane) waitDefaultNamespace(ctx context.Context) error {
	cs, err := cp.clientset()
	if err != nil {
		return fmt.Errorf("controlplane: kube-apiserver client: %w", err)
	}
	err = poll(ctx, cp.apiServer, func(ctx context.Context) error {
		_, err := cs.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("controlplane: wait for default namespace: %w", err)
	}
	return nil
}

// waitWorkloadsAdmitted waits until the default ServiceAccount exists (when
// its controller is enabled; Pods are rejected without it) and a Deployment
// passes admission in the default namespace (server-side dry run).
func (cp *ControlPlane) waitWorkloadsAdmitted(ctx context.Context) error {
	cs, err := cp.clientset()
	if err != nil {
		return fmt.Errorf("controlplane: kube-apiserver client: %w", err)
	}
	if cp.controllerEnabled("serviceaccount-controller") {
		err = poll(ctx, cp.controllerManager, func(ctx context.Context) error {
			_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{})
			return err
		})
		if err != nil {
			return fmt.Errorf("controlplane: wait for default ServiceAccount: %w", err)
		}
	}
	err = poll(ctx, cp.apiServer, func(ctx context.Context) error {
		_, err := cs.AppsV1().Deployments(metav1.NamespaceDefault).Create(ctx, probeDeployment(),
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
	if err != nil {
		return fmt.Errorf("controlplane: dry-run Deployment create: %w", err)
	}
	return nil
}

// controllerEnabled reports whether a controller is in Options.Controllers
// (or "*" enables all defaults).
func (cp *ControlPlane) controllerEnabled(name string) bool {
	for _, c := range cp.opts.Controllers {
		if c == name || c == "*" {
			return true
		}
	}
	return false
}

// probeDeployment is the Deployment used to check admission during Start.
func probeDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": "controlplane-probe"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "controlplane-probe"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "probe", Image: "registry.invalid/probe:1"},
				}},
			},
		},
	}
}
